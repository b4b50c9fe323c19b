print("httpcache")
