#!/bin/bash
#SBATCH --qos=normal

#SBATCH --tmp 1G
#SBATCH -n 3
# SBATCH --mem=1T (not a directive: space)
#SBATCH --dependency=after:{P4}+3
#SBATCH --kill-on-invalid-dep yes
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mail-type=END
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
