import sys

from lossless.hook_server.server import main

sys.exit(main(sys.argv[1:]))
