"""Who decides: observations, the Gymnasium env, heuristics, experts, PPO, OINPT, OAIL, methods.

``observation`` (feature blocks and layouts), ``env`` (``ilets/CloudScheduling-v0``),
``policies`` (the policy interface and the heuristics), ``experts`` and ``expert_kernels``
(GA, PSO, greedy, exact), ``ppo``, ``oinpt`` (demonstrations, cloning), ``oail`` (online
imitation), ``methods`` (the four learners and the heuristics as one online pass). Imports
the simulator and the layers below it.
"""
