// The sandbox's cert-manager controller (built by raykube.sandbox.build from github.com/cert-manager/cert-manager at
// the version pinned in raykube/sandbox/versions.py): cert-manager's own controllers, taken from its library's
// controller registry, for the PKI a self-signed or CA Issuer serves. No webhook, no cainjector, no ACME, Vault,
// Venafi or ingress-shim: the module proxy serves cert-manager's root module but not its cmd/* modules, so this is
// the one main of our own, and it registers only what raykube's mTLS needs.
//
// It runs as a host process of the sandbox with its own kubeconfig, and creates --ready-file once every informer it
// depends on has synced (the sandbox's start-up check).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// Each import registers its controller (or issuer backend) with controllerpkg.
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// The controllers a Certificate needs from creation to a Ready Secret, signed by a SelfSigned or CA Issuer: the
// Issuer's readiness, the CertificateRequest's approval and signing, and the Certificate's life cycle (trigger,
// private key, request, issuing into the Secret, readiness, old request clean-up).
var controllers = []string{
	"issuers",
	"certificaterequests-approver",
	"certificaterequests-issuer-ca",
	"certificaterequests-issuer-selfsigned",
	"certificates-trigger",
	"certificates-key-manager",
	"certificates-request-manager",
	"certificates-issuing",
	"certificates-readiness",
	"certificates-revision-manager",
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster to manage")
	readyFile := flag.String("ready-file", "", "created once the informer caches have synced")
	namespace := flag.String("cluster-resource-namespace", "kube-system", "where ClusterIssuers keep their Secrets")
	workers := flag.Int("workers", 5, "workers per controller (cert-manager's default)")
	klog.InitFlags(nil)
	flag.Parse()
	logf.InitLogs()
	if err := run(*kubeconfig, *readyFile, *namespace, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, readyFile, namespace string, workers int) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log, "cert-manager")
	// cert-manager's own defaults (internal/apis/config/controller/v1alpha1/defaults.go), except the namespace.
	factory, err := controllerpkg.NewContextFactory(ctx, controllerpkg.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions:      controllerpkg.IssuerOptions{ClusterResourceNamespace: namespace},
		CertificateOptions: controllerpkg.CertificateOptions{
			CopiedAnnotationPrefixes:                 []string{"*", "-kubectl.kubernetes.io/", "-fluxcd.io/", "-argocd.argoproj.io/"},
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	})
	if err != nil {
		return err
	}
	var running sync.WaitGroup
	for _, name := range controllers {
		constructor, ok := controllerpkg.Known()[name]
		if !ok {
			return fmt.Errorf("controller %q is not registered by this cert-manager version", name)
		}
		controller, err := constructor(factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		running.Go(func() {
			if err := controller.Run(workers, ctx); err != nil {
				logf.Log.Error(err, "controller stopped", "controller", name)
				stop()
			}
		})
	}
	// The controllers registered their informers with the shared factories while being built: start them now.
	shared, err := factory.Build("informers")
	if err != nil {
		return err
	}
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	for kind, synced := range shared.KubeSharedInformerFactory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return fmt.Errorf("the %s informer did not sync", kind)
		}
	}
	for kind, synced := range shared.SharedInformerFactory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return fmt.Errorf("the %s informer did not sync", kind)
		}
	}
	if readyFile != "" {
		if err := os.WriteFile(readyFile, []byte("synced\n"), 0o644); err != nil {
			return err
		}
	}
	logf.Log.Info("cert-manager controllers running", "controllers", controllers)
	running.Wait()
	return nil
}
