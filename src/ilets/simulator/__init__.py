"""The data centre: the exact event-driven cloud, the cost formula, and a SimPy twin.

``cloud`` (FCFS queues, exact energy, ``clone()``), ``objective`` (the one cost shared by the
reward, Greedy-Cost and the experts' fitness), ``twin`` (an independent implementation for
cross-checks). Imports the base and workloads layers.
"""
