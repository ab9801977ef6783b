# scaffold
