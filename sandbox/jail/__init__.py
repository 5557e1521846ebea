"""The jail: what a run process gives up before it sees user code (namespaces, a read-only root,
cgroup limits, seccomp). Imports only the standard library and sandbox's contracts."""
