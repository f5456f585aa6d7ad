package cluster

import (
	"fmt"
	"path"
	"time"

	"github.com/asynkron/protoactor-go/cluster/clusterproviders/consul"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/etcd"
	"github.com/hashicorp/consul/api"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// newConsul builds the consul provider: each member registers a service with
// a TTL check at the agent and watches the others.
func newConsul(c ConsulConfig) (*consul.Provider, error) {
	if c.Address == "" {
		c.Address = "127.0.0.1:8500"
	}
	if c.TTL <= 0 {
		c.TTL = 3 * time.Second
	}
	p, err := consul.NewWithConfig(&api.Config{Address: c.Address}, consul.WithTTL(c.TTL), consul.WithRefreshTTL(c.TTL/3))
	if err != nil {
		return nil, fmt.Errorf("cluster consul provider at %s: %w", c.Address, err)
	}
	return p, nil
}

// newEtcd builds the etcd provider: each member keeps a leased key under
// BaseKey/name and watches the prefix.
func newEtcd(name string, c EtcdConfig) (*etcd.Provider, error) {
	if len(c.Endpoints) == 0 {
		c.Endpoints = []string{"127.0.0.1:2379"}
	}
	if c.BaseKey == "" {
		c.BaseKey = "/sessionrt"
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = 5 * time.Second
	}
	// The provider keys a member BaseKey/name/name@id and watches the bare
	// prefix BaseKey/name, which also matches BaseKey/name2/…: cluster "a"
	// would take the members of cluster "ab" for its own. Under its own
	// directory the cluster's prefix is BaseKey/name/name, which no other
	// cluster's keys start with.
	p, err := etcd.NewWithConfig(path.Join(c.BaseKey, name), clientv3.Config{Endpoints: c.Endpoints, DialTimeout: c.DialTimeout})
	if err != nil {
		return nil, fmt.Errorf("cluster etcd provider at %v: %w", c.Endpoints, err)
	}
	return p, nil
}
