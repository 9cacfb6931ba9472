"""One module per user command, each a plain ``run`` function (options in, an exit code out) that
``scripts.cli`` calls; they print to ``scripts.lib.runtime.out`` and raise ``CliError`` to fail."""
