package l1
