from treesplit.cli import main

raise SystemExit(main())
