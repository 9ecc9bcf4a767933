"""Mutation and crossover operators, chosen by name (``rules/``, ``llm/``, ``basic``).

The contract they implement -- the protocols, :class:`~asmevo.operator.OperatorContext`,
:class:`~asmevo.operator.Rejected` and the registry -- is :mod:`asmevo.operator`;
the modules here register themselves into it on import, and asmevo finds them
through the ``asmevo.operators`` entry points (setup.cfg).
"""
