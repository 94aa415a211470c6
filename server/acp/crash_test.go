package acp

func crashAgent() {}
