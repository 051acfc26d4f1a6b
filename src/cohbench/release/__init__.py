"""The release folder, owned here and nowhere else: its layout with the one writer and the one reader of a config
(`layout`), building a config into it (`build`), what it says about itself (`index`: card, Croissant, manifest),
checking it (`verify`) and loading it (`load`). A build stage imports `layout` and `build` only."""
