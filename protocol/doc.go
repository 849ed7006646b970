package protocol
