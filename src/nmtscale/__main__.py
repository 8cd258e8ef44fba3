from nmtscale.cli import main

raise SystemExit(main())
