// codecprobe: one client creates N Pods (at its QPS, 64 in flight) and watches them until every one is Ready, with
// JSON or with protobuf on the wire (-content json|proto), so that kube-apiserver's CPU for the same work can be
// compared between the two. benchmarks/codec_probe/run.sh runs it on fresh local sandboxes; docs/architecture.md
// ("Scale") has what it measured. The watch resumes from the last resourceVersion when the API server ends it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kc := flag.String("kubeconfig", "", "")
	ns := flag.String("namespace", "probe", "")
	n := flag.Int("pods", 4000, "")
	ct := flag.String("content", "json", "json|proto")
	podFile := flag.String("pod", "", "Pod JSON")
	qps := flag.Float64("qps", 100, "")
	burst := flag.Int("burst", 200, "")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kc)
	if err != nil {
		panic(err)
	}
	cfg.QPS, cfg.Burst, cfg.UserAgent = float32(*qps), *burst, "codecprobe-"+*ct
	if *ct == "proto" {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	var tmpl corev1.Pod
	data, err := os.ReadFile(*podFile)
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(data, &tmpl); err != nil {
		panic(err)
	}
	ctx := context.Background()
	list, err := cs.CoreV1().Pods(*ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	var events, restarts, nready, ncreated atomic.Int64
	go func() {
		for range time.Tick(10 * time.Second) {
			fmt.Fprintln(os.Stderr, "progress: created", ncreated.Load(), "ready", nready.Load(), "events", events.Load())
		}
	}()
	done := make(chan struct{})
	go func() {
		ready := map[string]bool{}
		rv := list.ResourceVersion
		for {
			w, err := cs.CoreV1().Pods(*ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				fmt.Fprintln(os.Stderr, "watch:", err)
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				pod, ok := ev.Object.(*corev1.Pod)
				if !ok {
					continue
				}
				rv = pod.ResourceVersion
				if ev.Type == "BOOKMARK" {
					continue
				}
				events.Add(1)
				for _, c := range pod.Status.Conditions {
					if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
						ready[pod.Name] = true
						nready.Store(int64(len(ready)))
					}
				}
				if len(ready) == *n {
					close(done)
					return
				}
			}
			restarts.Add(1)
		}
	}()
	start := time.Now()
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i := 0; i < *n; i++ {
		p := tmpl.DeepCopy()
		p.Name = fmt.Sprintf("p-%05d", i)
		p.Namespace = *ns
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			for {
				if _, err := cs.CoreV1().Pods(*ns).Create(ctx, p, metav1.CreateOptions{}); err == nil {
					ncreated.Add(1)
					return
				} else {
					fmt.Fprintln(os.Stderr, err)
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	created := time.Since(start)
	<-done
	fmt.Printf("{\"content\": %q, \"pods\": %d, \"created_s\": %.1f, \"ready_s\": %.1f, \"events\": %d, \"watch_restarts\": %d}\n", *ct, *n, created.Seconds(), time.Since(start).Seconds(), events.Load(), restarts.Load())
}
