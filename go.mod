module huddle

go 1.26.8

require github.com/fsnotify/fsnotify v1.10.1

require golang.org/x/sys v0.50.0 // indirect
