"""Building the RAPTOR tree: embed chunks (`embed`, `embed_runtime`), cluster them (`cluster`,
`mixture`), summarise each cluster (`summarize`) and repeat layer by layer (`build`, `docbuild`).

`stages` times a build by stage; `treeplot` draws a stored tree.
"""
