package main

import (
	"context"
	"errors"
)

func (b *bench) browserBench(ctx context.Context) error {
	return errors.New("the browser benchmark is not written yet")
}
