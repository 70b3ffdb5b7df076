"""Functional forms of the nn layers (linear, conv2d, embedding, layer_norm, dropout, gelu, ...)."""
