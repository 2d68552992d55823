-- waiting_owner  the owner token of the LEASE waiter (on another node) that is next in line: set by the waiter with
--                waiting_until when no other live waiter is, cleared by every release. A release that finds a live
--                one hands the lease straight to it (owner_token = waiting_owner, lease until waiting_until plus a
--                second); the waiter's next attempt then takes the row as its owner. NULL: nobody is next in line.
--                Added last, so MariaDB 10.3+ and MySQL 8.0.12+ add it instantly.
ALTER TABLE `${lock_table}` ADD COLUMN waiting_owner CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NULL;
