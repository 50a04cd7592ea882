"""The Sentiment tab's run: a review classified once, the view kept in gr.State (handlers.py). The tab itself is
built in app.py (sentiment_tab)."""
