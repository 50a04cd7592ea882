"""The numbers behind the attention views: maps by kind, layer and head, colour scales and token focus, each head's
statistics and roles, the head table (each head's effect, passes run at once, hooks kept to their thread), inside
one head."""
