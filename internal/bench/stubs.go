package bench

import "context"

func runFleet(ctx context.Context, r *runner, tg *target) *Table    { return &Table{} }
func runShutdown(ctx context.Context, r *runner, tg *target) *Table { return &Table{} }
func runPool(ctx context.Context, r *runner, tg *target) *Table     { return &Table{} }
