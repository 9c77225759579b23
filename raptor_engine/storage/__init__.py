"""What is kept: the SQLite store (`store`, `db`, `migrations`), the hnswlib indices derived from it
(`index`), one store per server (`spaces`), writers taking turns (`writers`) and the LLM's cache.

SQLite is the source of truth; every index here can be deleted and rebuilt from it.
"""
