"""Functional-API model builders: `from keras_attention import models`."""

__all__ = []
