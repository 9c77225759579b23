"""Answering a question: collapsed-tree retrieval (`retrieve`), the extractive answer and citations
(`answer`), follow-ups in a conversation (`followup`), small talk (`smalltalk`) and rate limits.
"""
