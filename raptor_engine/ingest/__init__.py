"""Reading an upload: files to text (`load`, in a child process by `parse_worker`), text to sentences
(`sentences`) and ~100-token chunks of whole sentences (`chunk`), all under one build's limits (`budget`).

The bottom of the engine: it imports nothing from the other stages.
"""

from . import books  # noqa: F401  (adds the .odt and .epub readers to `load`, which books builds on)
