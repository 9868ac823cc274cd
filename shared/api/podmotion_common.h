/* Names shared by the migration.podmotion.io kinds. */
#ifndef GW_PODMOTION_COMMON_H
#define GW_PODMOTION_COMMON_H

#define PODMOTION_GROUP "migration.podmotion.io"

#endif
