"""ILETS reproducible study: online cloud task scheduling with imitation-enabled deep RL."""

__version__ = "0.1.0"
