package identity_test

import (
	"errors"
	"fmt"

	"github.com/leasehold/leasehold/identity"
)

// FromLookup reads the same variables as FromEnv through a function, here a
// map standing in for the environment of a Kubernetes pod.
func ExampleFromLookup() {
	env := map[string]string{
		"HOSTNAME":     "orders-7d9f8b6c5-x2x7k",
		"CLUSTER_NAME": " eu-west-1\n", // surrounding whitespace is trimmed
	}
	id, err := identity.FromLookup(func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(id.Node)
	fmt.Println(id.Cluster)
	fmt.Println(len(id.Instance)) // random on every call
	// Output:
	// orders-7d9f8b6c5-x2x7k
	// eu-west-1
	// 32
}

// A lookup that maps other variable names reads them: here POD_NAME for
// the node and KUBERNETES_CLUSTER for the cluster.
func ExampleFromLookup_otherNames() {
	vars := map[string]string{"POD_NAME": "web-0", "KUBERNETES_CLUSTER": "eu-1"}
	names := map[string]string{"HOSTNAME": "POD_NAME", "CLUSTER_NAME": "KUBERNETES_CLUSTER"}
	id, err := identity.FromLookup(func(k string) (string, bool) {
		v, ok := vars[names[k]]
		return v, ok
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(id.Node, id.Cluster)
	// Output: web-0 eu-1
}

func ExampleIdentity_Holder() {
	id := identity.Identity{
		Node:     "orders-7d9f8b6c5-x2x7k",
		Cluster:  "eu-west-1",
		Instance: "3f2b8c1e9a7d4e6f8b0c2d4e6f8a0b1c",
	}
	fmt.Println(id.Holder())
	// Output:
	// orders-7d9f8b6c5-x2x7k/eu-west-1/3f2b8c1e9a7d4e6f8b0c2d4e6f8a0b1c
}

func ExampleParseHolder() {
	id, err := identity.ParseHolder("host.example.com/default/3f2b8c1e9a7d4e6f8b0c2d4e6f8a0b1c")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("node=%s cluster=%s instance=%s\n", id.Node, id.Cluster, id.Instance)

	_, err = identity.ParseHolder("host.example.com/default")
	fmt.Println(err)
	// Output:
	// node=host.example.com cluster=default instance=3f2b8c1e9a7d4e6f8b0c2d4e6f8a0b1c
	// identity: holder "host.example.com/default" has 2 part(s) separated by "/"; want node/cluster/instance
}

func ExampleIdentity_Validate() {
	id := identity.Identity{Node: "node-a", Cluster: "eu west", Instance: "i-1"}
	err := id.Validate()
	fmt.Println(err)
	fmt.Println(errors.Is(err, identity.ErrInvalid))
	// Output:
	// identity: Cluster "eu west" contains ' ' at byte 2; allowed are ASCII letters, digits, '.', '_' and '-'
	// true
}
