// Package deploy checks the Kubernetes manifests beside it: every document
// decodes strictly into the API type of its kind, and the settings gavel
// relies on are in place. It is a module of its own so that the Kubernetes
// API packages never enter the gavel module.
package deploy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// kinds maps apiVersion and kind to a constructor of the API type a
// manifest document of that kind decodes into. A kind missing here fails the
// test, so a new manifest cannot go unchecked.
var kinds = map[string]func() any{
	"batch/v1 Job":        func() any { return new(batchv1.Job) },
	"apps/v1 Deployment":  func() any { return new(appsv1.Deployment) },
	"v1 Service":          func() any { return new(corev1.Service) },
	"v1 ConfigMap":        func() any { return new(corev1.ConfigMap) },
	"v1 Secret":           func() any { return new(corev1.Secret) },
	"v1 PersistentVolume": func() any { return new(corev1.PersistentVolume) },
	"v1 PersistentVolumeClaim": func() any {
		return new(corev1.PersistentVolumeClaim)
	},
}

// separator matches a line that starts a new YAML document.
var separator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// object is one decoded manifest document.
type object struct {
	name string // file name and document number, for messages
	obj  any
}

// decode splits a manifest into its documents and decodes each strictly
// into the API type of its kind: unknown or duplicate fields, fields spelled
// in another case and unknown kinds are errors.
func decode(file string, data []byte) ([]object, error) {
	var objs []object
	for i, doc := range separator.Split(string(data), -1) {
		name := fmt.Sprintf("%s document %d", file, i+1)
		js, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
			continue // only comments
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := json.UnmarshalCaseSensitivePreserveInts(js, &head); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		newObj, ok := kinds[head.APIVersion+" "+head.Kind]
		if !ok {
			return nil, fmt.Errorf("%s: unknown kind %q of apiVersion %q", name, head.Kind, head.APIVersion)
		}
		obj := newObj()
		strict, err := json.UnmarshalStrict(js, obj)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(strict) > 0 {
			return nil, fmt.Errorf("%s: %w", name, strict[0])
		}
		objs = append(objs, object{name, obj})
	}
	return objs, nil
}

// check returns the problems of one decoded object with the settings gavel
// relies on.
func check(o object) []string {
	var problems []string
	var pod *corev1.PodSpec
	switch obj := o.obj.(type) {
	case *batchv1.Job:
		pod = &obj.Spec.Template.Spec
		if obj.Name == "gavel-grade" {
			if obj.Spec.CompletionMode == nil || *obj.Spec.CompletionMode != batchv1.IndexedCompletion {
				problems = append(problems, "job gavel-grade: completionMode is not Indexed (gavel reads JOB_COMPLETION_INDEX)")
			}
		}
		if obj.Name == "gavel-grade" || obj.Name == "gavel-commit" {
			for _, c := range pod.Containers {
				problems = append(problems, objectStorage(c)...)
			}
		}
	case *appsv1.Deployment:
		pod = &obj.Spec.Template.Spec
		if obj.Name == "gavel-serve" {
			for _, c := range pod.Containers {
				problems = append(problems, probe(c.Name, "livenessProbe", c.LivenessProbe, "/healthz")...)
				problems = append(problems, probe(c.Name, "readinessProbe", c.ReadinessProbe, "/readyz")...)
			}
		}
	}
	if pod != nil {
		if len(pod.Containers) == 0 {
			problems = append(problems, "no containers")
		}
		for _, c := range append(append([]corev1.Container{}, pod.InitContainers...), pod.Containers...) {
			if strings.TrimSpace(c.Image) == "" {
				problems = append(problems, fmt.Sprintf("container %q: no image", c.Name))
			}
		}
	}
	return problems
}

// objectStorage returns the first problem of a grading or commit container
// with the object storage example: its command line must name an s3:// URL
// and its AWS keys must come from a Secret, never from a literal.
func objectStorage(c corev1.Container) []string {
	if !strings.Contains(strings.Join(append(append([]string{}, c.Command...), c.Args...), " "), "s3://") {
		return []string{fmt.Sprintf("container %q: reads or writes no s3:// URL", c.Name)}
	}
	fromSecret := map[string]bool{}
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "AWS_") && strings.Contains(e.Name, "KEY") {
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				return []string{fmt.Sprintf("container %q: %s is not taken from a Secret", c.Name, e.Name)}
			}
			fromSecret[e.Name] = true
		}
	}
	for _, name := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		if !fromSecret[name] {
			return []string{fmt.Sprintf("container %q: %s is not taken from a Secret", c.Name, name)}
		}
	}
	return nil
}

// probe returns a problem when p is not an HTTP GET of path.
func probe(container, field string, p *corev1.Probe, path string) []string {
	if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path {
		return []string{fmt.Sprintf("container %q: %s is not an HTTP GET of %s", container, field, path)}
	}
	return nil
}

func TestManifests(t *testing.T) {
	var files []string
	for _, pattern := range []string{"*.yaml", "*.yml"} {
		matches, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, matches...)
	}
	// The manifests the README points to; each must be present and checked.
	want := map[string]bool{
		"kubernetes-indexed-job.yaml": false,
		"kubernetes-commit-job.yaml":  false,
		"kubernetes-serve.yaml":       false,
	}
	for _, file := range files {
		if _, ok := want[file]; ok {
			want[file] = true
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decode(file, data)
		if err != nil {
			t.Error(err)
			continue
		}
		if len(objs) == 0 {
			t.Errorf("%s: no documents", file)
		}
		for _, o := range objs {
			for _, p := range check(o) {
				t.Errorf("%s: %s", o.name, p)
			}
		}
	}
	for file, seen := range want {
		if !seen {
			t.Errorf("%s: missing", file)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"unknown field", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndatta: {}\n", `unknown field "datta"`},
		{"unknown nested field", "apiVersion: batch/v1\nkind: Job\nspec:\n  completionmode: Indexed\n", `unknown field "spec.completionmode"`},
		{"duplicate field", "apiVersion: v1\nkind: ConfigMap\ndata: {}\ndata: {}\n", `"data" already set`},
		{"unknown kind", "apiVersion: v1\nkind: Pod\n", `unknown kind "Pod"`},
		{"known kind, other version", "apiVersion: batch/v1beta1\nkind: Job\n", `unknown kind "Job" of apiVersion "batch/v1beta1"`},
		{"unknown field in second document", "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: Service\nspec: {portz: []}\n", `document 2: unknown field "spec.portz"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decode("x.yaml", []byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("decode: got %v, want an error containing %s", err, tt.want)
			}
		})
	}
}

func TestCheckFinds(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"no image", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: gavel-other}\nspec:\n  template:\n    spec:\n      containers: [{name: gavel}]\n", `container "gavel": no image`},
		{"no object storage", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: gavel-commit}\nspec:\n  template:\n    spec:\n      containers: [{name: gavel, image: g, args: [commit, /data/out]}]\n", `container "gavel": reads or writes no s3:// URL`},
		{"literal secret", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: gavel-commit}\nspec:\n  template:\n    spec:\n      containers:\n        - name: gavel\n          image: g\n          args: [commit, s3://b/out/]\n          env: [{name: AWS_SECRET_ACCESS_KEY, value: x}]\n", "AWS_SECRET_ACCESS_KEY is not taken from a Secret"},
		{"not indexed", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: gavel-grade}\nspec:\n  completionMode: NonIndexed\n  template:\n    spec:\n      containers: [{name: gavel, image: g, args: [s3://b/], env: [{name: AWS_ACCESS_KEY_ID, valueFrom: {secretKeyRef: {name: s, key: a}}}, {name: AWS_SECRET_ACCESS_KEY, valueFrom: {secretKeyRef: {name: s, key: b}}}]}]\n", "completionMode is not Indexed"},
		{"wrong probe", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: gavel-serve}\nspec:\n  template:\n    spec:\n      containers:\n        - name: gavel\n          image: g\n          livenessProbe: {httpGet: {path: /readyz, port: 8080}}\n          readinessProbe: {httpGet: {path: /readyz, port: 8080}}\n", "livenessProbe is not an HTTP GET of /healthz"},
		{"no probe", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: gavel-serve}\nspec:\n  template:\n    spec:\n      containers:\n        - name: gavel\n          image: g\n          livenessProbe: {httpGet: {path: /healthz, port: 8080}}\n", "readinessProbe is not an HTTP GET of /readyz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := decode("x.yaml", []byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, check(o)...)
			}
			if len(got) != 1 || !strings.Contains(got[0], tt.want) {
				t.Errorf("check: got %q, want one problem containing %q", got, tt.want)
			}
		})
	}
}
