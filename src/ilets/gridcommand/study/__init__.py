"""The grid-command scenario's study part: how the study's one runner, store, shipping and
verifier handle its profiles and cells (:mod:`.scenario`, registered with the study by import
path), its profiles and cell names (:mod:`.profiles`), its pilot (:mod:`.pilot`), the drift
protocol (:mod:`.drift`) and the clone-transfer probe (:mod:`.clone_transfer`).
"""
