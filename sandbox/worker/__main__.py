from sandbox.worker.main import main

main()
