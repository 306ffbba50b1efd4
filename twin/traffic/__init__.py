"""Traffic in the lab, sent and captured only inside the lab's own namespaces: RoCEv2
frames (`roce`), one-shot runs of many flows (`engine`, `flows`), paced background
streams (`stream`) and tcpdump captures in a node (`capture`)."""
