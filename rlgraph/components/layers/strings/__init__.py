"""String (text) processing layers."""
__all__ = []
