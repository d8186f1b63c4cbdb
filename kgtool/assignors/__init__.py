"""Kafka's partition assignors, client-side and server-side (KIP-848), with exact outputs.

Each assignor lives in its own module and implements :class:`kgtool.assignors.model.Assignor`;
:mod:`kgtool.assignors.registry` maps Kafka's protocol names to them.
"""
