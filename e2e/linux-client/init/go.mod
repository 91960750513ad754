module gitnfs-e2e/census-init

go 1.22
