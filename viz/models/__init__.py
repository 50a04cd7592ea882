"""The models a tab shows: loading them at start (env vars, folders, Hub ids), the model choice and the
training-step slider."""
