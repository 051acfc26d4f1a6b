"""One module per corpus. Each calls `cohbench.registry.register` at import and defines `Builder`;
every module in this package is discovered, so adding a corpus is adding a module."""
