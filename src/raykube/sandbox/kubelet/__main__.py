from raykube.sandbox.kubelet.main import main

main()
