"""Declarative column sets for the trainers steptable reads."""

from steptable.schemas.routing import routing_columns

__all__ = ["routing_columns"]
