"""The jail: what a run process gives up before it sees user code (isolation: namespaces, a read-only root,
seccomp; cgroups: its limits). Imports only the standard library and sandbox's contracts."""
