package cluster

import (
	"fmt"
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
// BaseKey and watches the prefix.
func newEtcd(c EtcdConfig) (*etcd.Provider, error) {
	if len(c.Endpoints) == 0 {
		c.Endpoints = []string{"127.0.0.1:2379"}
	}
	if c.BaseKey == "" {
		c.BaseKey = "/sessionrt"
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = 5 * time.Second
	}
	p, err := etcd.NewWithConfig(c.BaseKey, clientv3.Config{Endpoints: c.Endpoints, DialTimeout: c.DialTimeout})
	if err != nil {
		return nil, fmt.Errorf("cluster etcd provider at %v: %w", c.Endpoints, err)
	}
	return p, nil
}
