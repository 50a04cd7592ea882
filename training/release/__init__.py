"""What a trained model becomes for others: the Space's folder, model cards and their attention figure, and the
export that lets `transformers` load a published model (trust_remote_code=True)."""
