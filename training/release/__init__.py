"""What a trained model becomes for others: model cards (card_texts.py says what each task's says) and their attention
figure, the export that lets `transformers` load a published model (trust_remote_code=True), the bundled weights'
storage, and training.publish's checks, folder assembly (a model repo, the Space) and push to the Hub."""
