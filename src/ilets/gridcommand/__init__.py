"""The grid-command scenario: a data centre that follows a grid operator's power command.

``command`` (events, schedules, regimes), ``power`` (exact slot power, the counterfactual
baseline), ``config`` (:class:`GridCommandConfig`, the shipped ``gridcommand-*`` profiles),
``features`` (observation blocks), ``env`` (:class:`GridCommandEnv`,
``ilets/GridCommand-v0``) and ``metrics`` (tracking metrics, :func:`evaluate`). The
simulator, the plain scenario's cost and its observation layouts are used unchanged; the
scenario adds only the cloud's ``release`` keyword and ``objective.tracking_term``.
"""
