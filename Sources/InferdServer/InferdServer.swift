import Log
