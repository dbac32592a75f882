// Command crdfixup adjusts the CRDs that controller-gen writes where Knative's schema
// differs from the Kubernetes types Ferry embeds: a Revision's containers may omit
// their name (Ferry names the user container "user-container"). `make generate` runs
// it after controller-gen, so the files stay generated, never hand-edited.
package main

import (
	"fmt"
	"os"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

func main() {
	for _, path := range os.Args[1:] {
		if err := fixup(path); err != nil {
			fmt.Fprintf(os.Stderr, "crdfixup: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func fixup(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(raw, crd); err != nil {
		return err
	}
	for i := range crd.Spec.Versions {
		if v := crd.Spec.Versions[i].Schema; v != nil && v.OpenAPIV3Schema != nil {
			walk(v.OpenAPIV3Schema)
		}
	}
	// Marshal through a map to drop the empty status that the typed struct always has.
	asMap := map[string]any{}
	js, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(js, &asMap); err != nil {
		return err
	}
	delete(asMap, "status")
	out, err := yaml.Marshal(asMap)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

// walk makes containers[].name optional wherever a pod spec appears.
func walk(s *apiextensionsv1.JSONSchemaProps) {
	for name, p := range s.Properties {
		if (name == "containers" || name == "initContainers") && p.Items != nil && p.Items.Schema != nil {
			p.Items.Schema.Required = slices.DeleteFunc(p.Items.Schema.Required, func(r string) bool { return r == "name" })
			// A list keyed by name needs the name; an unnamed container makes it atomic.
			atomic := "atomic"
			p.XListType, p.XListMapKeys = &atomic, nil
		}
		if name == "template" {
			addTemplateMetadata(&p)
		}
		walk(&p)
		s.Properties[name] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		walk(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		walk(s.AdditionalProperties.Schema)
	}
}

// addTemplateMetadata lets a Revision template's metadata carry generateName (Knative
// allows it) and creationTimestamp (null in every template Knative has defaulted, so in
// every exported Service): controller-gen's embedded ObjectMeta has neither, and
// kubectl's strict field validation would refuse them.
func addTemplateMetadata(t *apiextensionsv1.JSONSchemaProps) {
	md, ok := t.Properties["metadata"]
	if !ok || md.Properties == nil {
		return
	}
	if _, ok := t.Properties["spec"]; !ok {
		return
	}
	md.Properties["generateName"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	md.Properties["creationTimestamp"] = apiextensionsv1.JSONSchemaProps{Type: "string", Format: "date-time", Nullable: true}
	t.Properties["metadata"] = md
}
