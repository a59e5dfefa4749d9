from gpuparity.cli.main import main

main()
