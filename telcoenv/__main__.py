from telcoenv.cli import main

raise SystemExit(main())
