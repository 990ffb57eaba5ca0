"""The grid-command scenario's report part: chapter 12's numbers, tables and sentences, pure
functions of the shipped grid-command results and the archive: the results and their tables
(:mod:`.results`), the ladder's bound (:mod:`.bound`), the learners' positive control
(:mod:`.positive_control`), the drift protocol (:mod:`.drift`), the criteria (:mod:`.criteria`),
the sentences (:mod:`.prose`), the chapter's finding and appendix (:mod:`.chapter`) and the
scenario's deviations rows (:mod:`.deviations`).
"""
