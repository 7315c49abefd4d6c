#!/bin/bash
#SBATCH --overcommit
#SBATCH --tmp 1G
#SBATCH --dependency afterany:{P1}:{P3}
#PBS -l mem=2gb


#SBATCH --comment="combo, with comma"
#SBATCH --wckey k1
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
