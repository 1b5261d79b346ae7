module raykube.local/tools/govectors

go 1.25.0

require (
	github.com/robfig/cron/v3 v3.0.1
	go.yaml.in/yaml/v2 v2.4.3
	k8s.io/apimachinery v0.35.0
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/fxamacker/cbor/v2 v2.9.0 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730 // indirect
)
