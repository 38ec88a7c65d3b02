"""SGLang server option catalogs shipped as package data: `sglang-<version>.json`.

Each file is the JSON dump of `ServerArgs.add_cli_args` for that SGLang version (see
`repro.recipe.argv_check`). Add a version by extracting it from an image of that version.
"""
