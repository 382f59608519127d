"""The schema of landed files: inferred, kept beside the checkpoint, evolved; CSV by header."""
