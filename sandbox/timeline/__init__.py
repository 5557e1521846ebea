"""Inside a kernel: where the time goes. The regions of a source (regions) made Proton's scopes, a
launch under Proton's intra-kernel instrumentation (run), its record decoded (record) into the
result's `timeline` part (part). Launches with sandbox.launch; never imports run/, trace/, worker/
or jail/."""
